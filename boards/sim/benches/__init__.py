"""Benches of a rig through the host's client (a subpackage: it uses nandrig.host.link, which uses the virtual rig)."""
