"""A panic in the Rust code must reach Python as an exception, not abort.

The extension links the unwinder statically (libgcc_eh, see
crates/bale-python/build.rs) so that `import bale` does not load libgcc_s;
this checks that unwinding still works with it.
"""

import subprocess
import sys

CHILD = r"""
import bale._bale as native
try:
    native._panic_for_test()
except BaseException as e:
    print("caught", type(e).__name__, str(e))
    import bale
    print("still works", bale.thaw(bale.compact([1, 2, 3]).root))
"""


def test_panic_becomes_a_python_exception_and_the_module_keeps_working():
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "caught PanicException bale: deliberate panic (unwinding self-test)"
    assert lines[1] == "still works [1, 2, 3]"


def test_extension_does_not_need_libgcc_s():
    if not sys.platform.startswith("linux"):
        return
    import bale._bale as native

    with open(native.__file__, "rb") as f:
        image = f.read()
    # The dynamic string table names every NEEDED library.
    assert b"libgcc_s.so" not in image
