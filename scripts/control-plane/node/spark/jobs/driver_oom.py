"""A job whose driver the kernel OOM-kills (tests/real_node/): the driver's Python process
grows past the driver pod's memory limit; the driver JVM, its heap pre-touched, is the largest
process in the cgroup and is killed; the driver pod ends 137, OOMKilled."""

import time

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
spark.sparkContext.parallelize(range(4), 4).count()
time.sleep(5)
hog = []
while True:
    hog.append(bytearray(b"x") * (16 << 20))
    time.sleep(0.02)
