"""The leak test's table of blocks per operation, in pytest's terminal summary."""

import sys


def pytest_terminal_summary(terminalreporter):
    leaks = sys.modules.get("adversarial.test_leaks") or sys.modules.get("test_leaks")
    if leaks is None or not leaks.RESULTS:
        return
    terminalreporter.section("leak test: sys.getallocatedblocks() growth per operation")
    terminalreporter.write_line(f"limit {leaks.LIMIT} blocks per loop (the smallest of up to four loops)")
    for line in leaks.table_lines():
        terminalreporter.write_line(line)
