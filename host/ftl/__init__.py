"""The flash translation layer the workload evaluation runs over a rig (issue 45): ftl.py, its chip (flash.py),
its ECC and density policies (policy.py)."""
