//! Container logs the simulated containers write: Spark-like executor startup lines and a heartbeat.

use super::{Kubelet, PodRef};
use crate::store::Obj;

impl Kubelet {
    pub(in crate::control) fn log_line(&self, level: &str, class: &str, msg: &str) -> String {
        let ts = self.store.clock.now().format("%y/%m/%d %H:%M:%S");
        format!("{ts} {level} {class}: {msg}")
    }

    pub(in crate::control) fn log(&self, p: &Obj, line: String) {
        let c = p.field("/spec/containers/0/name");
        self.logs.append(p.namespace(), p.name(), c, line);
    }

    pub(super) fn log_start(&self, v: &Obj) {
        let name = v.name();
        let role = v.label("spark-role");
        let lines: Vec<String> = match role {
            Some("executor") => {
                let id = v.label("spark-exec-id").unwrap_or("?");
                let ip = Some(v.field("/status/podIP"))
                    .filter(|s| !s.is_empty())
                    .unwrap_or("10.244.1.2");
                vec![
                    self.log_line(
                        "INFO",
                        "CoarseGrainedExecutorBackend",
                        &format!("Started daemon with process name: 14@{name}"),
                    ),
                    self.log_line("INFO", "SignalUtils", "Registering signal handler for TERM"),
                    self.log_line("INFO", "SignalUtils", "Registering signal handler for HUP"),
                    self.log_line(
                        "INFO",
                        "CoarseGrainedExecutorBackend",
                        "Connecting to driver: spark://CoarseGrainedScheduler@driver-svc:7078",
                    ),
                    self.log_line(
                        "INFO",
                        "CoarseGrainedExecutorBackend",
                        "Successfully registered with driver",
                    ),
                    self.log_line(
                        "INFO",
                        "Executor",
                        &format!("Starting executor ID {id} on host {ip}"),
                    ),
                ]
            }
            Some("driver") => vec![
                self.log_line("INFO", "SparkContext", "Running Spark version 4.0.1"),
                self.log_line(
                    "INFO",
                    "SparkContext",
                    &format!(
                        "Submitted application: {}",
                        v.label("spark-app-name").unwrap_or_default()
                    ),
                ),
                self.log_line(
                    "INFO",
                    "Utils",
                    "Successfully started service 'sparkDriver' on port 7078.",
                ),
                self.log_line(
                    "INFO",
                    "SparkUI",
                    "Bound SparkUI to 0.0.0.0, and started at http://driver-svc:4040",
                ),
            ],
            _ => vec![format!("{} started", name)],
        };
        for l in lines {
            self.log(v, l);
        }
    }

    /// A running executor's task lines, when due: every 2 s, or less often past 4,000 pods
    /// (the kubelet's pass decides), so a 100k-executor cluster does not spend its core
    /// writing logs.
    pub(super) fn write_logs(&mut self, p: &Obj, t: f64) {
        let Some(rt) = self.runtimes.get_mut(&PodRef::of(p)) else {
            return;
        };
        rt.last_log = t;
        rt.log_seq += 1;
        let seq = rt.log_seq;
        if p.label("spark-role") == Some("executor") {
            let stage = seq / 8;
            let task = seq % 8;
            let tid = seq * 3 + 1;
            let line = self.log_line(
                "INFO",
                "Executor",
                &format!("Running task {task}.0 in stage {stage}.0 (TID {tid})"),
            );
            self.log(p, line);
            let line = self.log_line("INFO", "Executor", &format!("Finished task {task}.0 in stage {stage}.0 (TID {tid}). 2104 bytes result sent to driver"));
            self.log(p, line);
        }
    }
}
