#!/bin/bash
# The Spark image's entrypoint (localhost/spark-triage-spark:4.3.0, scripts/control-plane/node/
# node.sh): what Spark's own kubernetes/dockerfiles/spark/entrypoint.sh does with the first
# argument Spark's pods pass, written here for the pip layout of pyspark (SPARK_HOME is the
# pyspark package directory). `driver`: spark-submit in client mode inside the driver pod, bound
# to the pod's address; `executor`: the executor JVM with the settings Spark put in the pod's
# environment. tini runs as PID 1 (signals forwarded, the child's exit status returned: 137
# when the kernel OOM-kills the JVM).
set -eo pipefail

SPARK_CLASSPATH="${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$SPARK_HOME/jars/*"
if [ -n "${SPARK_CONF_DIR:-}" ] && [ -d "$SPARK_CONF_DIR" ]; then
    SPARK_CLASSPATH="$SPARK_CONF_DIR:$SPARK_CLASSPATH"
fi
# SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in numeric order.
mapfile -t SPARK_EXECUTOR_JAVA_OPTS < <(env | grep '^SPARK_JAVA_OPT_' | sed 's/^SPARK_JAVA_OPT_//' |
    sort -t= -k1,1 -n | sed 's/^[0-9]*=//')

case "${1:-}" in
    driver)
        shift
        CMD=("$SPARK_HOME/bin/spark-submit"
            --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS"
            --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS"
            --deploy-mode client "$@")
        ;;
    executor)
        shift
        CMD=("$JAVA_HOME/bin/java" "${SPARK_EXECUTOR_JAVA_OPTS[@]}"
            -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY"
            -cp "$SPARK_CLASSPATH"
            org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend
            --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID"
            --cores "$SPARK_EXECUTOR_CORES" --app-id "$SPARK_APPLICATION_ID"
            --hostname "$SPARK_EXECUTOR_POD_IP" --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID"
            --podName "$SPARK_EXECUTOR_POD_NAME")
        ;;
    *)
        CMD=("$@")
        ;;
esac
exec /usr/bin/tini -s -- "${CMD[@]}"
