package cluster

import (
	"encoding/base64"
	"encoding/json"
)

func quoteJSON(b []byte) string {
	q, _ := json.Marshal(string(b))
	return string(q)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
