"""Mutated regions with fixed checksums, read without verification, at scale.

    .venv/bin/python tests/adversarial/mutate_regions.py SEED COUNT

The mutants and reads of ``test_attacks.py::test_mutated_regions_raise_only_format_errors``
(1,500 per seed in the suite), at any count: each region is compacted from a
seed value, 1 to 3 bytes past the header are changed and the checksum is
fixed; the result is loaded without verification and walked (repr, hash,
keys, lookups, iteration) and thawed, then loaded with ``verify=True`` and,
if accepted, walked and thawed again. Prints how many mutants raised anything but FormatError, ThawError
or RecursionError, by exception and message, and exits 1 if any did.
"""

import collections
import pathlib
import random
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import bale  # noqa: E402
from test_attacks import _mutation_seeds, _touch, refresh_checksum  # noqa: E402


def main(seed: int, count: int) -> int:
    rng = random.Random(seed)
    values = _mutation_seeds()
    wrong = collections.Counter()
    for _ in range(count):
        b = bytearray(bytes(bale.compact(rng.choice(values), share=rng.random() < 0.3)))
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(64, len(b))] = rng.randrange(256)
        data = refresh_checksum(b)
        for verify in (False, True):
            try:
                r = bale.load(data, verify=verify)
                _touch(r.root)
                bale.thaw(r.root)
            except (bale.FormatError, bale.ThawError, RecursionError):
                pass
            except Exception as e:  # a finding
                wrong[(type(e).__name__, str(e)[:80], verify)] += 1
    print(f"{count} mutants (seed {seed}): {sum(wrong.values())} raised another exception")
    for (kind, message, verify), n in wrong.most_common():
        print(f"  {n} {kind} (verify={verify}): {message}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
