"""The link to a rig: the typed client (rig.py), the framed transport with its retries (transport.py), a rig
behind a labgrid place (place.py)."""
