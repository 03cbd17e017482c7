// Placeholder until the agent lands.
