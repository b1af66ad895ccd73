"""Runs every finding script (each in its own process, with a timeout) and
prints PASS (behaviour correct) / FAIL (bug present) per script."""
import glob, os, subprocess, sys, time

here = os.path.dirname(os.path.abspath(__file__))
results = []
for path in sorted(glob.glob(os.path.join(here, "[0-9][0-9]_*.py"))):
    t = time.time()
    try:
        p = subprocess.run([sys.executable, path], cwd=here, capture_output=True, text=True, timeout=900)
        status = "PASS" if p.returncode == 0 else f"FAIL({p.returncode})"
    except subprocess.TimeoutExpired:
        status = "FAIL(timeout)"
    results.append((os.path.basename(path), status, time.time() - t))
    print(f"{status:14s} {time.time() - t:6.1f}s  {os.path.basename(path)}", flush=True)
sys.exit(0 if all(s == "PASS" for _, s, _ in results) else 1)
