"""The virtual rig's schedule of CYCLE jobs on one bus (boards/sim/bus_schedule.py): alone, a job takes its closed
form; together, jobs never beat the floor (the bus's total, each array alone) and, when the arrays set the pace,
stay within a few transfers of it; a link to the virtual rig sees CYCLEs on several targets run at once."""
from dataclasses import replace

import numpy as np
import pytest

from nandrig.boards.sim.benches.targets import bench_targets_virtual
from nandrig.boards.sim.bus_schedule import JobOps, alone_ns, job_ends, shared_bus_ends


def random_job(rng, n: int) -> JobOps:
    cached = rng.random(n) < 0.7
    cached[0] = False
    return JobOps(rng.integers(100, 50_000, n), rng.integers(0, 2_000_000, n), cached)


def test_a_job_alone_takes_its_closed_form_event_by_event():
    rng = np.random.default_rng(1)
    for _ in range(50):
        job = random_job(rng, int(rng.integers(1, 300)))
        assert shared_bus_ends(7, {3: job}) == {3: 7 + alone_ns(job)}
        assert job_ends(7, {3: job, 5: JobOps(*(np.array([], dtype=t) for t in (int, int, bool)))}) == \
            {3: 7 + alone_ns(job), 5: 7}


def test_jobs_together_never_beat_the_floor_and_a_busy_bus_never_idles():
    rng = np.random.default_rng(2)
    for n in (2, 3, 8):
        jobs = {k: random_job(rng, 200) for k in range(n)}
        ends = job_ends(0, jobs)
        assert all(ends[k] >= alone_ns(j) for k, j in jobs.items())
        assert max(ends.values()) >= sum(int(j.bus_ns.sum()) for j in jobs.values())
    # transfers alone (no array time): the bus works without a gap until the last one
    bus_only = {k: JobOps(np.full(50, 1000 + k), np.zeros(50, int), np.zeros(50, bool)) for k in range(4)}
    assert max(job_ends(0, bus_only).values()) == sum(50 * (1000 + k) for k in range(4))


def test_array_bound_jobs_share_the_bus_within_a_transfer_each():
    """Eight alike jobs of cache programs, each transfer 45 us against 1.3 ms of array: the bus is a quarter busy,
    so each job ends at most one transfer per other target after it would alone."""
    n_ops, bus, arr = 500, 45_000, 1_300_000
    cached = np.ones(n_ops, bool)
    cached[0] = False
    job = JobOps(np.full(n_ops, bus), np.full(n_ops, arr), cached)
    ends = job_ends(0, dict.fromkeys(range(8), job))
    assert sorted(ends.values()) == [alone_ns(job) + k * bus for k in range(8)]


@pytest.mark.parametrize("alike", [False, True])
def test_the_virtual_rig_cycles_several_targets_at_once_near_the_floor(alike):
    """``bench rig --targets 1,2,4 --virtual``: the CYCLEs sent back to back over the link all run (none refused
    BUSY), and the rig time is within 5 % of the floor, its throughput within 5 % of what the dies allow."""
    out = bench_targets_virtual("mlc-small", 1, (1, 2, 4), alike=alike)
    assert out["meets_target"], out["runs"]
    four = out["runs"][-1]
    assert four["throughput"] >= 0.95 * (4 if alike else four["throughput_floor"])
    assert four["rig_ns"] < 1.2 * out["runs"][0]["rig_ns"]  # at once, not one after another (that would be 4x)


def test_a_job_held_as_repeated_rounds_ends_as_its_operations_one_by_one():
    """A CYCLE's job is its rounds held once with their count: the same ends, alone and sharing the bus, as the
    operations written out."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        jobs_runs, jobs_flat = {}, {}
        for k in range(int(rng.integers(1, 4))):
            runs = [replace(random_job(rng, int(rng.integers(1, 6))), repeat=int(rng.integers(1, 5)))
                    for _ in range(int(rng.integers(1, 4)))]
            jobs_runs[k] = runs
            jobs_flat[k] = JobOps(*(np.concatenate([np.tile(getattr(r, f), r.repeat) for r in runs])
                                    for f in ("bus_ns", "array_ns", "cached")))
            assert alone_ns(runs) == alone_ns(jobs_flat[k])
        assert job_ends(11, jobs_runs) == job_ends(11, jobs_flat)
        if len(jobs_runs) > 1:
            assert shared_bus_ends(11, jobs_runs) == shared_bus_ends(11, jobs_flat)
