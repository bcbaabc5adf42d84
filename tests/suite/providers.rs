//! Integration tests: providers. The mock provider's wire behaviour (raw HTTP against it), and the
//! provider layer streaming from it over loopback, for every wire API.

mod common;
mod connections;
mod faults;
mod loopback;
mod mock_server;
mod requests;
mod responses;
mod streaming;
mod through_the_binary;
