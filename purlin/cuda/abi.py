"""The kernel ABI of include/purlin/abi.h, for the Python side: the layout of
the per-rank tables and of the kernel parameter's header. tests/python/
test_cuda_abi.py checks every constant here against the header."""

from __future__ import annotations

from pathlib import Path

INCLUDE_DIR = Path(__file__).parent / "include"
ABI_HEADER = INCLUDE_DIR / "purlin" / "abi.h"

# Global words, then one symmetric base address per rank, then phase headers.
COUNTER_STRIDE = 0
PHASE_COUNT = 1
COUNTS_WINDOW = 2
TABLE_CAPACITY = 3
GLOBAL_WORDS = 4
COUNTS_SCRATCH_ROWS = 3

PH_UNITS = 0
PH_GROUPS = 1
PH_STAGED = 2
PH_MAX_UNITS = 3
PH_UNITS_AT = 4
PH_GROUPS_AT = 5
PH_BUFFER = 6
PH_HALF_BYTES = 7
PH_SLOT_BYTES = 8
PH_SLOTS = 9
PH_READY = 10
PH_FREE = 11
PH_SOURCE = 12
PH_MULTICAST = 13
PH_SENDERS_AT = 14
PH_SENDERS = 15
PH_RECEIVERS_AT = 16
PH_RECEIVERS = 17
PHASE_WORDS = 18

U_SRC = 0
U_BYTES = 1
U_WINDOW = 2
U_CONSUMERS_AT = 3
U_CONSUMERS = 4
U_DESTS_AT = 5
U_DESTS = 6
UNIT_WORDS = 7

G_DST = 0
G_BYTES = 1
G_SOURCES_AT = 2
G_SOURCES = 3
G_REMOTE = 4
GROUP_WORDS = 5

S_RANK = 0
S_UNIT = 1
S_OFFSET = 2
SOURCE_WORDS = 3

# Tables of at most this many words are copied into each block's shared memory.
SHARED_TABLE_WORDS = 4096

# abi::Header: every field 8 bytes.
HEADER_FIELDS = ("rank", "input", "output", "blocks", "arrivals", "error", "error_claim", "abort",
                 "timeout_ns", "tables", "table_words", "counts", "recv_counts", "record_at", "input_at", "output_at",
                 "input_bytes", "programmatic")
HEADER_BYTES = 8 * len(HEADER_FIELDS)
BLOCK_STATE_BYTES = 16

# abi::Moves, by snac.PhaseOp.moves.
MOVES = {"staging": 0, "packets": 1, "pull": 2, "push": 3}

# abi::LayoutKind and abi::CountsError.
LAYOUT_KINDS = {"packed": 0, "scattered": 1, "addressed": 2, "transposed": 3}
COUNTS_ERRORS = {"None": 0, "Negative": 1, "Input": 2, "Output": 3, "Buffer": 4, "Tables": 5}
# ErrorRecord.packets of a counts error, and of a peer's buffers at other offsets of its heap.
BAD_COUNTS = 2
BAD_BUFFERS = 3

# The C++ names of the constants above.
CONSTANTS = {
    "kCounterStride": COUNTER_STRIDE, "kPhaseCount": PHASE_COUNT, "kCountsWindow": COUNTS_WINDOW,
    "kTableCapacity": TABLE_CAPACITY, "kGlobalWords": GLOBAL_WORDS, "kCountsScratchRows": COUNTS_SCRATCH_ROWS,
    "kPhUnits": PH_UNITS, "kPhGroups": PH_GROUPS, "kPhStaged": PH_STAGED, "kPhMaxUnits": PH_MAX_UNITS,
    "kPhUnitsAt": PH_UNITS_AT, "kPhGroupsAt": PH_GROUPS_AT, "kPhBuffer": PH_BUFFER,
    "kPhHalfBytes": PH_HALF_BYTES, "kPhSlotBytes": PH_SLOT_BYTES, "kPhSlots": PH_SLOTS,
    "kPhReady": PH_READY, "kPhFree": PH_FREE, "kPhSource": PH_SOURCE, "kPhMulticast": PH_MULTICAST,
    "kPhSendersAt": PH_SENDERS_AT, "kPhSenders": PH_SENDERS, "kPhReceiversAt": PH_RECEIVERS_AT,
    "kPhReceivers": PH_RECEIVERS, "kPhaseWords": PHASE_WORDS,
    "kUSrc": U_SRC, "kUBytes": U_BYTES, "kUWindow": U_WINDOW, "kUConsumersAt": U_CONSUMERS_AT,
    "kUConsumers": U_CONSUMERS, "kUDestsAt": U_DESTS_AT, "kUDests": U_DESTS, "kUnitWords": UNIT_WORDS,
    "kGDst": G_DST, "kGBytes": G_BYTES, "kGSourcesAt": G_SOURCES_AT, "kGSources": G_SOURCES,
    "kGRemote": G_REMOTE, "kGroupWords": GROUP_WORDS,
    "kSRank": S_RANK, "kSUnit": S_UNIT, "kSOffset": S_OFFSET, "kSourceWords": SOURCE_WORDS,
    "kBadCounts": BAD_COUNTS, "kBadBuffers": BAD_BUFFERS,
}
