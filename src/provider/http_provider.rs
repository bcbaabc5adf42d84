//! A wire API over HTTP as a [`StreamFn`]: the api says how to build a request and parse its
//! answer (`HttpApi`); [`HttpProvider`] does the rest the same way for each of them (the key
//! check, sending with retries, one terminal event), on a spawned task.

use std::marker::PhantomData;

use super::assembler::{Assembler, spawn_provider};
use super::transport::{HttpClient, HttpTarget, WireParser, checked_target, drive};
use crate::agent::model::Model;
use crate::agent::stream_contract::{
    AssistantEventStream, LlmContext, StreamFn, StreamOptions, StreamRequest,
};

/// What one call asks of a wire API.
pub(crate) struct Call<'a> {
    pub model: &'a Model,
    pub context: &'a LlmContext,
    pub options: &'a StreamOptions,
}

/// What one wire API says about a call. Implemented by one marker type per API.
pub(crate) trait HttpApi: 'static {
    type Parser: WireParser;

    /// The request for `call`, authenticated with `key` (the resolved API key, if any).
    fn target(call: Call<'_>, key: Option<String>) -> Result<HttpTarget, serde_json::Error>;

    /// A fresh parser for one attempt.
    fn parser(model: &Model) -> Self::Parser;
}

/// Streams from the API `A` (see `HttpApi`).
pub struct HttpProvider<A> {
    client: HttpClient,
    api: PhantomData<fn() -> A>,
}

impl<A> Default for HttpProvider<A> {
    fn default() -> Self {
        HttpProvider {
            client: HttpClient::new(),
            api: PhantomData,
        }
    }
}

impl<A> HttpProvider<A> {
    pub fn new() -> Self {
        HttpProvider::default()
    }
}

impl<A: HttpApi> StreamFn for HttpProvider<A> {
    fn stream(&self, request: StreamRequest) -> AssistantEventStream {
        let client = self.client.clone();
        spawn_provider(&request.model.clone(), move |sink| async move {
            let StreamRequest {
                model,
                context,
                options,
            } = request;
            let asm = Assembler::new(sink, &model);
            let call = || Call {
                model: &model,
                context: &context,
                options: &options,
            };
            let build = |key| A::target(call(), key);
            let Some((asm, target)) = checked_target(asm, &model, &options, build).await else {
                return;
            };
            // The body owns what it needs; the loop's next append must not find the
            // transcript still shared (it would copy it).
            drop(context);
            drive(&client, target, &options, asm, || A::parser(&model)).await;
        })
    }
}
