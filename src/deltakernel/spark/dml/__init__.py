"""DELETE and UPDATE on Spark as distributed jobs (MERGE reuses the same machinery).

The driver plans (kernel snapshot, file skipping, the transaction's read set) and commits one kernel
transaction; Spark scans the candidate files, evaluates conditions and new values, builds deletion vectors
and writes files on the executors. Nothing proportional to the data reaches the driver: it collects one
small row per touched file (or per file written). Modules:

- `plan.py`     — conditions and SET lists checked by Spark's analyzer; the kernel's pruning predicate;
- `frame.py`    — the target rows of the candidate files with `(file id, physical row index)`;
- `touched.py`  — per-file match counts, deletion vectors built and written on executors;
- `output.py`   — rows written back (native Parquet write or the kernel's writer in `mapInArrow`) and
                  change data files;
- `commit.py`   — one operation run and committed (cleanup only when the commit is known absent);
- `delete.py`, `update.py` — the operations (`merge*.py`: MERGE);
- `facts.py`    — expression facts (a Column's SQL text, MERGE's join keys, a source's alias, analysis now):
                  one protocol, read off Spark's analyzed plan on classic sessions (`facts_classic.py`) or
                  off the client's expression trees on Spark Connect (`facts_connect.py`).

Both session kinds run the same jobs (public DataFrame API: `mapInArrow`, Arrow UDFs, joins; task inputs
through `session.Shared`). What differs: classic sessions scan the candidate files through the Delta file
index and read condition texts / join keys off the analyzed JVM plan; Spark Connect scans exactly the
candidate files with Spark's Parquet reader, and forces analysis (`plan.resolved`) where a classic
DataFrame is analyzed eagerly, so bad expressions are typed errors before any job either way.
"""

from __future__ import annotations
