"""What a store shows its reader: the report (report.py, on the page of report_page.py), the live page (live.py),
CSV export and the fit's rows (export.py), a campaign's closing summary (summary.py)."""
