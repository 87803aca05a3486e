// SPDX-License-Identifier: MIT
//! The real-time flow's rate controllers (GCC, Copa, fixed) and the TCP mode's rate
//! adapter, one implementation for the laboratory's `rtflow` (a Rust dependency) and the
//! ns-3 simulator (the C ABI in `capi`).

pub mod capi;
pub mod control;
pub mod packet;
pub mod tcp_rate;
