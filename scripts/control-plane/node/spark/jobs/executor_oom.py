"""A job whose first executor the kernel OOM-kills (tests/real_node/, Spark in cluster mode).

The first attempt of task 0 grows its Python worker past the executor pod's memory limit (the
worker's memory is in spark.executor.memoryOverhead). The executor JVM, its heap pre-touched
(-XX:+AlwaysPreTouch), is then the largest process in the container's memory cgroup, and the
kernel's OOM killer ends it: the container exits 137, OOMKilled. The driver replaces the
executor, the task's next attempt succeeds on the new one, and the job ends.
"""

import time

from pyspark import TaskContext
from pyspark.sql import SparkSession


def work(i):
    ctx = TaskContext.get()
    if i == 0 and ctx.attemptNumber() == 0:
        hog = []
        while True:
            hog.append(bytearray(b"x") * (16 << 20))
            time.sleep(0.02)
    return i * i


spark = SparkSession.builder.getOrCreate()
total = spark.sparkContext.parallelize(range(4), 4).map(work).sum()
print(f"executor_oom: sum of squares {total}")
spark.stop()
