//! A process's CPU time so far: user and system time of all its threads, not its children's
//! (`/proc/PID/stat` fields 14 and 15, in clock ticks).

use std::time::Duration;

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux everywhere this runs).
const TICKS_PER_SECOND: u64 = 100;

pub fn of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // The command name (field 2) may hold spaces; the fields after it follow its closing paren.
    let after = &stat[stat.rfind(')').expect("stat") + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks = |index: usize| fields[index - 3].parse::<u64>().expect("ticks");
    Duration::from_millis((ticks(14) + ticks(15)) * 1000 / TICKS_PER_SECOND)
}
