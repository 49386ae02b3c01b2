//! A real Spark 4.3 driver (PyPI's pyspark) on the simulator with the process kubelet, while
//! spark-triage watches: `scripts/e2e-spark.sh` does the work and prints `N passed, M
//! failed`. Without Java, python3 or the Python package index (build.rs) it is ignored, with
//! its reason; a run the script skips all the same (an older Java) fails.

use std::process::Command;

#[test]
#[cfg_attr(
    not(all(have_java, have_python3, have_pypi)),
    ignore = "needs Java 17, python3 and the Python package index (a real pyspark driver; .ci/run installs them)"
)]
fn real_spark_driver_on_the_process_kubelet() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{root}/scripts/e2e-spark.sh"))
        .env("SPARK_TRIAGE_BIN", env!("CARGO_BIN_EXE_spark-triage"))
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    // What the build found (java, python3, the index) was there: a run the script still
    // skipped (an older Java, a failed install) is a failure, with the script's reason.
    let skipped = stdout.lines().find(|l| l.contains("e2e-spark: SKIPPED"));
    assert!(skipped.is_none(), "{}", skipped.unwrap_or_default());
    assert!(
        stdout.lines().any(|l| l.ends_with(" passed, 0 failed")),
        "no clean summary line"
    );
    assert!(out.status.success(), "scripts/e2e-spark.sh failed");
}
