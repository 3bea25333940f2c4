"""A report to share: one self-contained HTML page from rescore results (``regrade report``)."""
