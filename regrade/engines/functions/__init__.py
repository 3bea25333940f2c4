"""Excel functions some engines lack, implemented once and shared."""
