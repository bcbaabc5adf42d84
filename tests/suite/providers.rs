//! Integration tests: providers. The mock provider's wire behaviour (raw HTTP against it), and the
//! provider layer streaming from it over loopback.

mod mock_server;
