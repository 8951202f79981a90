"""The `memc` command line, on top of every stage: one module per command group (cli/main.py
lists them and loads each only when its command runs).

Imports sit at module top except where a command needs Dagster, dbt or the servers: those
commands import their stage inside the function (each such line says so). Measured with
`python -X importtime` on the 2-core CI machine: every stage's import hoisted, any `memc` call
(even `memc --help`) spends 1.7 s loading Dagster, dbt, FastAPI and the MCP SDK; as it is,
`memc --help` takes 0.6 s. `memc ask` imports its stages inside the command too (cli/ask.py):
answered by a running `memc serve` it loads click, the presets and the stdlib's HTTP client
only (tests/unit/test_ask_path.py holds both to it)."""
