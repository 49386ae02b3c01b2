"""A job whose backlog makes dynamic allocation ask for more executors (tests/real_node/):
64 tasks of 3 s each, one core per executor; with spark.dynamicAllocation.maxExecutors=4 the
driver's target rises to 4 within seconds of the first backlog."""

import time

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
spark.sparkContext.parallelize(range(64), 64).map(lambda x: time.sleep(3) or x).count()
spark.stop()
