"""C sources for the rig soft-core, with native builds for tests."""
