package rpc

import (
	"errors"
	"net/rpc"
	"reflect"
)

// InmemCall runs one call against srv in-process, without serialising: the
// arguments are copied (shallowly) into the endpoint's argument value and the
// reply is copied back, as a remote call would.
func InmemCall(srv *rpc.Server, method string, args, reply any) error {
	c := &inmemCodec{method: method, args: args, reply: reply}
	if err := srv.ServeRequest(c); err != nil {
		return err
	}
	return c.err
}

// InmemReplier is a reply that may hold, for its encoder, data in another
// form than the one its encoding decodes to (structs.
// NodeClientAllocsResponse keeps its table as the state store's
// allocations). An in-process call calls InmemReply before handing the
// reply over, so the caller reads what a remote caller would decode.
type InmemReplier interface {
	InmemReply()
}

type inmemCodec struct {
	method string
	args   any
	reply  any
	err    error
}

func (c *inmemCodec) ReadRequestHeader(r *rpc.Request) error {
	r.ServiceMethod = c.method
	return nil
}

func (c *inmemCodec) ReadRequestBody(body any) error {
	if body == nil {
		return nil
	}
	src := reflect.Indirect(reflect.ValueOf(c.args))
	dst := reflect.Indirect(reflect.ValueOf(body))
	if !src.Type().AssignableTo(dst.Type()) {
		return errors.New("rpc: argument type " + src.Type().String() + " does not match " + dst.Type().String())
	}
	dst.Set(src)
	return nil
}

func (c *inmemCodec) WriteResponse(resp *rpc.Response, body any) error {
	if resp.Error != "" {
		c.err = errors.New(resp.Error)
		return nil
	}
	if r, ok := body.(InmemReplier); ok {
		r.InmemReply()
	}
	src := reflect.Indirect(reflect.ValueOf(body))
	dst := reflect.Indirect(reflect.ValueOf(c.reply))
	if !src.Type().AssignableTo(dst.Type()) {
		c.err = errors.New("rpc: reply type " + src.Type().String() + " does not match " + dst.Type().String())
		return nil
	}
	dst.Set(src)
	return nil
}

func (c *inmemCodec) Close() error { return nil }
