"""Run `autofj.AutoFJ` on one of its benchmark datasets; print its pairs and time as JSON.

Runs in AutoFJ's own environment (benchmarks/setup_autofj_env.sh): autofj 0.0.6 needs
numpy < 2 and pandas < 2.1, older than pearl's pins. Called by benchmarks/join_autofj.py.
"""

import json
import sys
import time

from autofj import AutoFJ
from autofj.datasets import load_data

left, right, _ = load_data(sys.argv[1])
start = time.perf_counter()
result = AutoFJ(precision_target=float(sys.argv[2]), verbose=False).join(left, right, id_column="id")
print(json.dumps({"seconds": time.perf_counter() - start,
                  "pairs": [[int(r), int(l)] for r, l in zip(result["id_r"], result["id_l"])]}))
