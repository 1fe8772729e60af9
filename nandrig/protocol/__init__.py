"""The host <-> rig protocol: one spec (:mod:`.spec`), its framing, and the C header made from it."""
from nandrig.protocol.framing import (Deframer, Frame, ReplyAssembly, cobs_decode, cobs_encode, in_parts,  # noqa: F401
                                     reply, request)
from nandrig.protocol.spec import *  # noqa: F401,F403  (the spec's names are the protocol's)
