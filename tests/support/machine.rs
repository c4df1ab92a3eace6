//! The machine's CPU time from `/proc/stat` (Linux): how much of a stretch the cores
//! sat idle or were stolen by the hypervisor, so that a report can tell a noisy VM
//! (or a pipeline's bubbles) from the code it measures. Also used by
//! `benches/compare.rs`.

/// All CPUs' time so far, in clock ticks; zeros where `/proc/stat` cannot be read.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuTicks {
    pub total: u64,
    /// Idle and waiting for IO: no runnable thread.
    pub idle: u64,
    /// The hypervisor ran someone else while a thread here was runnable.
    pub steal: u64,
}

impl CpuTicks {
    pub fn now() -> CpuTicks {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        // cpu  user nice system idle iowait irq softirq steal guest guest_nice
        let fields: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .take(8)
            .filter_map(|f| f.parse().ok())
            .collect();
        let at = |i: usize| fields.get(i).copied().unwrap_or(0);
        CpuTicks {
            total: fields.iter().sum(),
            idle: at(3) + at(4),
            steal: at(7),
        }
    }

    /// The ticks between `earlier` and this reading.
    pub fn since(self, earlier: CpuTicks) -> CpuTicks {
        CpuTicks {
            total: self.total.saturating_sub(earlier.total),
            idle: self.idle.saturating_sub(earlier.idle),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }

    /// Idle and stolen shares of `total`; zeros when nothing was counted.
    pub fn shares(self) -> Shares {
        if self.total == 0 {
            return Shares::default();
        }
        let total = self.total as f64;
        Shares {
            idle: self.idle as f64 / total,
            steal: self.steal as f64 / total,
        }
    }
}

/// Shares (0.0–1.0) of the machine's CPU time over a stretch that were idle (no
/// runnable thread: a pipeline with bubbles leaves cores idle) and stolen (a noisy VM,
/// whatever the code under test does).
#[derive(Clone, Copy, Debug, Default)]
pub struct Shares {
    pub idle: f64,
    pub steal: f64,
}
