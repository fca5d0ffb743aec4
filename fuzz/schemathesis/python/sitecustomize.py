"""Loaded by the Python that runs Schemathesis (`cargo xtask` puts this folder on PYTHONPATH).

Schemathesis' workers are threads, and CPython 3.11 before 3.11.8 keeps the AST constructor's recursion count
per interpreter, not per thread: two workers parsing at once (Hypothesis parses its strategies' lambdas to name
them) can fail a case with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905), as
a fresh clone's run did. One parse at a time keeps both workers and the interpreter's bug out of the results.
"""

import ast
import threading

_one_parse_at_a_time = threading.Lock()
_parse = ast.parse


def _parse_alone(*args, **kwargs):
    with _one_parse_at_a_time:
        return _parse(*args, **kwargs)


ast.parse = _parse_alone
