"""Workloads for the FTL: traces and synthetic request streams (trace.py)."""
