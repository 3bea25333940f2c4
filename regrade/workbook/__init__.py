"""Workbook analysis that depends on no engine: screening a file before anything parses it,
sheets and their formula cells, structured references, formula calls and dependency cones."""
