"""The campaign engine: creating, running, resuming and cancelling campaigns with the journal-before-send rule
(campaigns.py), FLARES validation (flares_validate.py), the rig self-test (selftest.py). The kinds it runs are in
nandrig.host.kinds."""
