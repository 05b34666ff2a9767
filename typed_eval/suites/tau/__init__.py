"""τ-bench conversations: an agent, a simulated user, τ-bench's own environments and evaluator."""
