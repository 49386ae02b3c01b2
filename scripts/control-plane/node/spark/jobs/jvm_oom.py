"""A job whose executors' JVMs run out of heap (tests/real_node/): one partition collects 60M
longs into one list in a 512m heap; the task's OutOfMemoryError reaches Spark's uncaught
exception handler and the executor exits 52 (SparkExitCode.OOM). With spark.task.maxFailures=2
the driver outlives the first executor's exit, and the job fails at the second."""

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
spark.range(0, 60_000_000, 1, 1).selectExpr("collect_list(id) AS l").selectExpr("size(l)").collect()
