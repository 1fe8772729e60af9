"""Workload traces (host/workload/trace.py): MSR Cambridge CSV, blkparse text and fio iologs read to the same
requests; a malformed line is refused in one line naming it; synthetic workloads have the shape they claim."""
import numpy as np
import pytest

from nandrig.errors import NandrigError
from nandrig.host.workload.trace import PROFILES, IoOp, Request, Synthetic, pages_of, read_trace, synthetic

MSR = """\
128166372003061629,hm,1,Write,3414753280,8192,1331
128166372016382155,hm,1,Read,3414761472,4096,1123
128166372026382245,hm,1,Write,0,512,1012
"""

BLKPARSE = """\
  8,0    3        1     0.000000000  4162  Q  WS 3417048 + 8 [jbd2/sda3-8]
  8,0    3        2     0.000002014  4162  G  WS 3417048 + 8 [jbd2/sda3-8]
  8,0    3        3     0.000004219  4162  P   N [jbd2/sda3-8]
  8,0    0        4     0.001500000  1201  Q   R 2048 + 16 [cat]
  8,0    0        5     0.002000000  1201  Q   D 4096 + 2048 [fstrim]
  8,0    0        6     0.002500000  1201  Q  FN [kworker]
  8,0    0        7     0.003000000     0  C   R 2048 + 16 [0]
CPU0 (8,0):
 Reads Queued:           1,        8KiB	 Writes Queued:           0,        0KiB
Total (8,0):
"""

FIO2 = """\
fio version 2 iolog
/dev/nvme0n1 add
/dev/nvme0n1 open
/dev/nvme0n1 write 0 4096
/dev/nvme0n1 read 4096 8192
/dev/nvme0n1 trim 8192 4096
/dev/nvme0n1 close
"""

FIO3 = """\
fio version 3 iolog
2 Nvme1n1 add
872 Nvme1n1 open
878 Nvme1n1 write 0 16384
888 Nvme1n1 read 16384 16384
10001677 Nvme1n1 close
"""


def test_each_format_reads_to_requests_timed_from_the_first():
    assert list(read_trace(MSR.splitlines(), "msr")) == [
        Request(0, IoOp.WRITE, 3414753280, 8192),
        Request(1332052600, IoOp.READ, 3414761472, 4096),
        Request(2332061600, IoOp.WRITE, 0, 512)]
    assert list(read_trace(BLKPARSE.splitlines(), "blkparse")) == [
        Request(0, IoOp.WRITE, 3417048 * 512, 4096),
        Request(1_500_000, IoOp.READ, 2048 * 512, 8192),
        Request(2_000_000, IoOp.TRIM, 4096 * 512, 2048 * 512)]
    assert list(read_trace(FIO2.splitlines(), "fio")) == [
        Request(0, IoOp.WRITE, 0, 4096), Request(0, IoOp.READ, 4096, 8192), Request(0, IoOp.TRIM, 8192, 4096)]
    assert list(read_trace(FIO3.splitlines(), "fio")) == [
        Request(0, IoOp.WRITE, 0, 16384), Request(10_000, IoOp.READ, 16384, 16384)]


@pytest.mark.parametrize("fmt,text,message", [
    ("msr", "128166372003061629,hm,1,Flush,0,512,1", r"t:1: not an MSR Cambridge line"),
    ("msr", "12816637200306162x,hm,1,Read,0,512,1", r"t:1: timestamp '12816637200306162x' is not a whole number"),
    ("blkparse", "hello world", r"t:1: not a blkparse event"),
    ("fio", "0 dev write 0 4096", r"t:1: not a fio iolog"),
    ("fio", "fio version 2 iolog\ndev write 4096", r"t:2: write needs an offset and a length"),
    ("fio", "fio version 3 iolog\n5 dev read -4 4096", r"t:2: offset -4 is negative"),
    ("csv", "", r"trace format 'csv': one of msr, blkparse, fio"),
])
def test_a_malformed_trace_is_refused_in_one_line_naming_its_line(fmt, text, message):
    with pytest.raises(NandrigError, match=message):
        list(read_trace(text.splitlines(), fmt, name="t"))


def test_synthetic_workloads_have_their_shape_and_repeat_from_their_seed():
    span = 4096 * 10_000
    a = list(synthetic(PROFILES["zipf"], span, 20_000, seed=3))
    assert a == list(synthetic(PROFILES["zipf"], span, 20_000, seed=3))
    slots = np.array([r.offset // 4096 for r in a])
    top = np.sort(np.bincount(slots, minlength=10_000))[::-1]
    assert top[:1000].sum() > 0.5 * len(a)  # a tenth of the pages takes most of the requests
    reads = sum(r.op == IoOp.READ for r in a) / len(a)
    assert abs(reads - 0.7) < 0.02
    uniform = np.bincount([r.offset // 4096 for r in synthetic(PROFILES["uniform"], span, 20_000)], minlength=10_000)
    assert np.sort(uniform)[::-1][:1000].sum() < 0.3 * 20_000  # Poisson's top tenth
    seq = list(synthetic(Synthetic("sequential", run=64), span, 640))
    runs = [seq[k:k + 64] for k in range(0, 640, 64)]
    assert all(all(b.offset - a.offset in (4096, 4096 - span) for a, b in zip(r, r[1:])) for r in runs)
    times = [r.time_ns for r in a]
    assert times == sorted(times) and abs(np.mean(np.diff(times)) - 100_000) < 5_000
    with pytest.raises(NandrigError, match="uniform, zipf or sequential"):
        Synthetic("random")


def test_a_request_touches_the_pages_its_bytes_cover():
    assert pages_of(Request(0, IoOp.WRITE, 4095, 2), 4096) == range(0, 2)
    assert pages_of(Request(0, IoOp.READ, 8192, 4096), 4096) == range(2, 3)
    assert pages_of(Request(0, IoOp.READ, 8192, 0), 4096) == range(0)
