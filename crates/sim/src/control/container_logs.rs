//! Container logs the simulated containers write: Spark-like executor startup lines and a heartbeat.

use super::*;

impl Control {
    pub(super) fn log_line(&self, level: &str, class: &str, msg: &str) -> String {
        let ts = self.store.clock.now().format("%y/%m/%d %H:%M:%S");
        format!("{ts} {level} {class}: {msg}")
    }

    pub(super) fn log(&self, v: &Value, line: String) {
        let c = v["spec"]["containers"][0]["name"]
            .as_str()
            .unwrap_or_default();
        self.logs.append(
            v["metadata"]["namespace"].as_str().unwrap_or_default(),
            v["metadata"]["name"].as_str().unwrap_or_default(),
            c,
            line,
        );
    }

    pub(super) fn log_start(&self, v: &Value) {
        let name = v["metadata"]["name"].as_str().unwrap_or_default();
        let role = v["metadata"]["labels"]["spark-role"].as_str();
        let lines: Vec<String> = match role {
            Some("executor") => {
                let id = v["metadata"]["labels"]["spark-exec-id"]
                    .as_str()
                    .unwrap_or("?");
                let ip = v["status"]["podIP"].as_str().unwrap_or("10.244.1.2");
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
                        v["metadata"]["labels"]["spark-app-name"]
                            .as_str()
                            .unwrap_or_default()
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

    pub(super) fn write_logs(&mut self, p: &Obj, t: f64) {
        let key = (p.namespace().to_owned(), p.name().to_owned());
        let Some(rt) = self.runtimes.get_mut(&key) else {
            return;
        };
        if t - rt.last_log < 2.0 {
            return;
        }
        rt.last_log = t;
        rt.log_seq += 1;
        let seq = rt.log_seq;
        if p.value["metadata"]["labels"]["spark-role"] == "executor" {
            let stage = seq / 8;
            let task = seq % 8;
            let tid = seq * 3 + 1;
            let line = self.log_line(
                "INFO",
                "Executor",
                &format!("Running task {task}.0 in stage {stage}.0 (TID {tid})"),
            );
            self.log(&p.value, line);
            let line = self.log_line("INFO", "Executor", &format!("Finished task {task}.0 in stage {stage}.0 (TID {tid}). 2104 bytes result sent to driver"));
            self.log(&p.value, line);
        }
    }
}
