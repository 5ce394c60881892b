// Package promtext reads the Prometheus text format as the benchmarks need it: series → value.
package promtext

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Parse reads Prometheus text: each series (name and labels as written) and its value.
func Parse(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// Sum adds the values of the series that start with prefix (a metric's name and "{").
func Sum(m map[string]float64, prefix string) float64 {
	s := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			s += v
		}
	}
	return s
}

// Scrape reads url's metrics with c (nil: http.DefaultClient), failing t when it cannot.
func Scrape(t testing.TB, c *http.Client, url string) map[string]float64 {
	t.Helper()
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	m, err := Parse(resp.Body)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	return m
}
