//! Test doubles that run for real: a scripted model provider served over loopback HTTP.
