//! Integration tests: the coding tools over a real temp-dir workspace (real files, real
//! processes). One submodule per area.

mod api;
mod bash;
mod beneath;
mod edit;
mod paths;
mod read;
mod sandbox;
mod search;
mod write;
