// Package contract holds the tests that validate every command's -o json against the JSON Schema
// of docs/schema/pullpath.schema.json, and the schema's enums against the Go constants.
package contract
