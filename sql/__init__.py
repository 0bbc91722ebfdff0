"""relcol's SQL: DuckDB views and macros over the long table.

Installed as ``relcol.sql``; files are read through ``importlib.resources`` by
``relcol.store``. One relation or macro per file, named after it.
"""
