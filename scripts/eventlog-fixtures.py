"""Writes the event-log fixtures of tests/fixtures/eventlog/codecs/ with a real Spark.

One tiny local-mode application per codec Spark writes event logs with (none, zstd, lz4,
snappy, lzf), each a single-file log, so the readers are checked against the bytes Spark's
own streams (zstd-jni, lz4-java, xerial snappy, ning lzf) write, not against our encoders.

    target/e2e/venv/bin/python scripts/eventlog-fixtures.py tests/fixtures/eventlog/codecs

(the venv is the real-Spark test's: scripts/e2e-spark.sh installs pyspark 4.3.0 there).
"""
import os
import shutil
import sys
import tempfile

from pyspark.sql import SparkSession

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for codec in ["none", "zstd", "lz4", "snappy", "lzf"]:
    tmp = tempfile.mkdtemp()
    b = (SparkSession.builder.master("local[2]")
         .appName("codec-" + codec)
         .config("spark.app.id", "spark-fixture-" + codec)
         .config("spark.eventLog.enabled", "true")
         .config("spark.eventLog.dir", "file://" + tmp)
         .config("spark.eventLog.rolling.enabled", "false")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.kubernetes.namespace", "spark-jobs"))
    if codec == "none":
        b = b.config("spark.eventLog.compress", "false")
    else:
        b = b.config("spark.eventLog.compress", "true").config("spark.eventLog.compression.codec", codec)
    spark = b.getOrCreate()
    spark.range(0, 1000, numPartitions=4).selectExpr("id % 7 as k").groupBy("k").count().collect()
    spark.stop()
    for name in os.listdir(tmp):
        shutil.copy(os.path.join(tmp, name), os.path.join(out, "codec-" + codec + (os.path.splitext(name)[1] if codec != "none" else "")))
        print(codec, name, os.path.getsize(os.path.join(tmp, name)))
    shutil.rmtree(tmp)
