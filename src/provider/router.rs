//! [`ProviderRouter`]: one [`StreamFn`] that dispatches on `model.api`.

use std::collections::HashMap;
use std::sync::Arc;

use super::anthropic::{self, AnthropicMessages};
use super::assembler::error_message;
use super::openai::{self, OpenAiCompletions};
use super::openai_responses::{self, OpenAiResponses};
use super::scripted::{self, ScriptedProvider};
use crate::agent::message::StopReason;
use crate::agent::stream_contract::{
    AssistantEventStream, AssistantMessageEvent, StreamFn, StreamRequest,
};

/// Dispatches each request to the provider registered for its model's `api`.
#[derive(Clone, Default)]
pub struct ProviderRouter {
    providers: HashMap<String, Arc<dyn StreamFn>>,
}

impl ProviderRouter {
    /// A router with no providers.
    pub fn new() -> Self {
        ProviderRouter::default()
    }

    /// The built-in APIs: `openai-completions`, `openai-responses`, `anthropic-messages`, and
    /// `scripted` (empty queue).
    pub fn with_defaults() -> Self {
        let mut router = ProviderRouter::new();
        router.register(openai::API, Arc::new(OpenAiCompletions::new()));
        router.register(openai_responses::API, Arc::new(OpenAiResponses::new()));
        router.register(anthropic::API, Arc::new(AnthropicMessages::new()));
        router.register(scripted::API, Arc::new(ScriptedProvider::new(Vec::new())));
        router
    }

    /// Registers (or replaces) the provider of an api.
    pub fn register(&mut self, api: &str, provider: Arc<dyn StreamFn>) -> &mut Self {
        self.providers.insert(api.to_string(), provider);
        self
    }

    pub fn apis(&self) -> Vec<String> {
        let mut apis: Vec<String> = self.providers.keys().cloned().collect();
        apis.sort();
        apis
    }
}

impl StreamFn for ProviderRouter {
    fn stream(&self, request: StreamRequest) -> AssistantEventStream {
        let model = &request.model;
        match self.providers.get(&model.api) {
            Some(provider) => provider.stream(request),
            None => {
                let reason = StopReason::Error;
                let message = format!("No provider registered for api: {}", model.api);
                let error = Box::new(error_message(model, reason, message));
                AssistantEventStream::from_events(vec![AssistantMessageEvent::Error {
                    reason,
                    error,
                }])
            }
        }
    }
}

/// The stream function the CLI and daemon use: every built-in API behind one router.
pub fn default_stream_fn() -> Arc<dyn StreamFn> {
    Arc::new(ProviderRouter::with_defaults())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::model::Model;
    use crate::agent::stream_contract::LlmContext;

    fn drain(mut stream: AssistantEventStream) -> Vec<AssistantMessageEvent> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut events = Vec::new();
            while let Some(event) = stream.next().await {
                events.push(event);
            }
            events
        })
    }

    #[test]
    fn outside_a_runtime_the_stream_is_a_single_error() {
        let model = Model {
            api: openai::API.into(),
            base_url: "http://127.0.0.1:9".into(),
            ..Model::default()
        };
        let stream = default_stream_fn().stream(StreamRequest::new(model, LlmContext::default()));
        let events = drain(stream);
        assert_eq!(events.len(), 1);
        let AssistantMessageEvent::Error { reason, error } = &events[0] else {
            panic!("{events:?}")
        };
        assert_eq!(*reason, StopReason::Error);
        assert_eq!(
            error.error_message.as_deref(),
            Some("no tokio runtime to stream on")
        );
    }

    #[test]
    fn registered_apis_are_listed_and_replaceable() {
        let mut router = ProviderRouter::with_defaults();
        assert_eq!(
            router.apis(),
            [
                "anthropic-messages",
                "openai-completions",
                "openai-responses",
                "scripted"
            ]
        );
        router.register("custom", Arc::new(ScriptedProvider::new(Vec::new())));
        assert!(router.apis().contains(&"custom".to_string()));
    }
}
