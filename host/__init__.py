"""The host side: the rig protocol and client, campaigns, the measurement store."""
