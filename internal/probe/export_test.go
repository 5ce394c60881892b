package probe

// SpoilTokens replaces every kept authorization with one the registry refuses (a revoked token).
func SpoilTokens(m *Memo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, t := range m.tokens {
		t.token = "Bearer spoiled"
		m.tokens[k] = t
	}
}
