package qemu

import "github.com/drover-project/drover/internal/drivers/configvalue"

// The config value readers, shared with the other drivers (configvalue).
var (
	sortedKeys   = configvalue.SortedKeys
	asString     = configvalue.String
	asBool       = configvalue.Bool
	asInt        = configvalue.Int
	asStringList = configvalue.StringList
	asBlocks     = configvalue.Blocks
	typeName     = configvalue.TypeName
)
