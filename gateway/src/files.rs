//! How much of a file the config names is read: the config, its JWK Set, the pins, the keys and
//! checkpoint notes are read through `toolgate::files::read_text`, which refuses a FIFO, a device
//! or a file longer than this (policy layers: `toolgate::files::MAX_POLICY_FILE_BYTES`).

/// 16 MiB: far past any config, key file or pins file a deployment writes.
pub const MAX_CONFIG_FILE_BYTES: u64 = 16 * 1024 * 1024;
