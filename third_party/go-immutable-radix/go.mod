module github.com/hashicorp/go-immutable-radix

go 1.19

require (
	github.com/hashicorp/go-uuid v1.0.0
	github.com/hashicorp/golang-lru v0.5.0
)
