# The Spark side of sketchd's Spark tests (package sparktest runs it):
# one local Spark session, started once, answering one request a line.
#
# A request is a JSON object on a line of stdin:
#   {"sql": "SELECT …", "args": {"name": value, …}}
#       runs spark.sql(sql, args=args): named parameter markers (:name);
#       a value {"hex": "…"} is a BINARY, anything else as JSON gives it
#   {"python": "…"}
#       runs Python code with `spark` defined, as a reader pasting it into
#       the pyspark shell would; answers what it printed (show() prints)
#       and the value of its last line if that is an expression
# The answer is a JSON object on a line of the protocol's stdout:
#   {"rows": [[…], …]}  the rows, each a list of its columns' values
#   {"value": …, "printed": "…"}
#   {"error": "…"}      the exception, and the session goes on answering
# BINARY values travel as {"hex": "…"}, arrays as lists, rows as lists.
# Nothing but answers is written to the protocol's stdout: Spark's own
# output (the JVM's included) goes to stderr.
#
# The session stops, and the script ends, when stdin closes.

import ast
import contextlib
import io
import json
import logging
import os
import shutil
import sys
import tempfile

proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr

work = tempfile.mkdtemp(prefix="sketchd-spark-")
os.chdir(work)

from pyspark.sql import Row, SparkSession

spark = (
    SparkSession.builder.master("local[1]")
    .appName("sketchd-sparktest")
    .config("spark.driver.memory", "512m")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.shuffle.partitions", "1")
    .config("spark.default.parallelism", "1")
    .config("spark.sql.catalogImplementation", "in-memory")
    .config("spark.sql.warehouse.dir", os.path.join(work, "warehouse"))
    # Start-up and small queries on a busy two-core machine: the JVM's
    # quick compiler only, one GC thread, and no whole-stage code
    # generation or adaptive planning (measured: about half the time).
    # None of them changes what a sketch function computes.
    .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    .config("spark.sql.codegen.wholeStage", "false")
    .config("spark.sql.adaptive.enabled", "false")
    .getOrCreate()
)
# A failing statement is an answer; Spark and PySpark would also log it,
# stack and all.
spark.sparkContext.setLogLevel("FATAL")
logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)


def out(v):
    if isinstance(v, (bytes, bytearray)):
        return {"hex": bytes(v).hex()}
    if isinstance(v, Row):
        return [out(x) for x in v]
    if isinstance(v, (list, tuple)):
        return [out(x) for x in v]
    if isinstance(v, dict):
        return {str(k): out(x) for k, x in v.items()}
    return v


def arg(v):
    if isinstance(v, dict) and set(v) == {"hex"}:
        return bytearray(bytes.fromhex(v["hex"]))
    return v


def run_python(code):
    # The last line's value, as the interactive shell would print it.
    tree = ast.parse(code)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    env = {"spark": spark}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(tree, "<docs>", "exec"), env)
        value = eval(compile(last, "<docs>", "eval"), env) if last else None
    return {"value": out(value), "printed": printed.getvalue()}


def answer(req):
    if "sql" in req:
        args = {k: arg(v) for k, v in (req.get("args") or {}).items()}
        rows = spark.sql(req["sql"], args=args or None).collect()
        return {"rows": [out(r) for r in rows]}
    if "python" in req:
        return run_python(req["python"])
    raise ValueError("unknown request: " + ", ".join(sorted(req)))


proto.write(json.dumps({"ready": spark.version}) + "\n")
proto.flush()
for line in sys.stdin:
    if not line.strip():
        continue
    try:
        ans = json.dumps(answer(json.loads(line)), allow_nan=False)
    except Exception as e:  # every failure is an answer
        msg = str(e).strip().splitlines()
        ans = json.dumps({"error": type(e).__name__ + ": " + (msg[0] if msg else "")})
    proto.write(ans + "\n")
    proto.flush()

spark.stop()
os.chdir("/")
shutil.rmtree(work, ignore_errors=True)
