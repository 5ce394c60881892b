// Package report holds pullpath's data model (layers, classes, steps, reports) and its JSON and text renderers; it imports only the standard library.
package report
