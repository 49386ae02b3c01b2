//! The standard `process_*` metrics (as the Prometheus clients of Go and Java export them):
//! resident and virtual memory, CPU seconds, open and maximum descriptors, start time. Read
//! from `/proc/self` at each scrape, not every second: a recorder holding 20,000 connections
//! lists its descriptors only when asked.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Registered once per `/metrics` registry.
#[derive(Debug, Default)]
pub(crate) struct Process;

impl Collector for Process {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Ok(me) = procfs::process::Process::myself() else {
            return Ok(()); // not Linux, or no /proc: the figures are left out, not invented
        };
        let mut gauge = |name: &str, help: &str, v: f64| -> Result<(), std::fmt::Error> {
            let g = ConstGauge::new(v);
            g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)
        };
        if let Ok(stat) = me.stat() {
            let page = procfs::page_size() as f64;
            gauge(
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                stat.rss as f64 * page,
            )?;
            gauge(
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                stat.vsize as f64,
            )?;
            let ticks = procfs::ticks_per_second() as f64;
            if let Ok(boot) = procfs::boot_time_secs() {
                gauge(
                    "process_start_time_seconds",
                    "Start time of the process since the Unix epoch in seconds",
                    boot as f64 + stat.starttime as f64 / ticks,
                )?;
            }
            if let Ok(n) = me.fd_count() {
                gauge(
                    "process_open_fds",
                    "Number of open file descriptors",
                    n as f64,
                )?;
            }
            if let Ok(limits) = me.limits()
                && let procfs::process::LimitValue::Value(max) = limits.max_open_files.soft_limit
            {
                gauge(
                    "process_max_fds",
                    "Maximum number of open file descriptors",
                    max as f64,
                )?;
            }
            let cpu = ConstCounter::new((stat.utime + stat.stime) as f64 / ticks);
            cpu.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                cpu.metric_type(),
            )?)?;
        }
        Ok(())
    }
}
