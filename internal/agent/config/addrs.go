package config

import (
	"fmt"
	"net"
	"strconv"
)

// normalizedAddrs holds the resolved listen ("ip:port") and advertise
// ("host:port") address of each protocol, filled by NormalizeAddrs.
type normalizedAddrs struct {
	bindHTTP, bindRPC, bindSerf string
	advHTTP, advRPC, advSerf    string
}

// NormalizeAddrs resolves, per protocol (http, rpc, serf):
//   - the listen address: addresses.<proto>, else bind_addr, joined with
//     ports.<proto>;
//   - the advertised address: advertise.<proto> (its port defaults to
//     ports.<proto>); else the listen IP when it is a specific address;
//     when the listen IP is a wildcard (0.0.0.0 or ::): 127.0.0.1 in dev
//     mode, otherwise the first private IPv4 address of the host, else
//     its first non-loopback IPv4 address.
//
// It must be called on the final merged config before HTTPAddr, RPCAddr,
// SerfAddr and the Advertise* accessors.
func (c *Config) NormalizeAddrs() error {
	if c.Ports == nil {
		c.Ports = &Ports{}
	}
	bind := c.BindAddr
	if bind == "" {
		bind = "0.0.0.0"
	}
	addrs := c.Addresses
	if addrs == nil {
		addrs = &Addresses{}
	}
	adv := c.Advertise
	if adv == nil {
		adv = &Addresses{}
	}
	n := &normalizedAddrs{}
	protos := []struct {
		name      string
		bindOver  string
		advertise string
		port      int
		bindOut   *string
		advOut    *string
	}{
		{"http", addrs.HTTP, adv.HTTP, c.Ports.HTTP, &n.bindHTTP, &n.advHTTP},
		{"rpc", addrs.RPC, adv.RPC, c.Ports.RPC, &n.bindRPC, &n.advRPC},
		{"serf", addrs.Serf, adv.Serf, c.Ports.Serf, &n.bindSerf, &n.advSerf},
	}
	for _, p := range protos {
		ip := bind
		key := "bind_addr"
		if p.bindOver != "" {
			ip, key = p.bindOver, "addresses."+p.name
		}
		if net.ParseIP(ip) == nil {
			return &Error{Key: key, Msg: fmt.Sprintf("%s %q is not an IP address (Drover does not resolve go-sockaddr templates or host names here)", key, ip)}
		}
		*p.bindOut = net.JoinHostPort(ip, strconv.Itoa(p.port))

		a, err := advertiseAddr(p.advertise, ip, p.port, c.DevMode)
		if err != nil {
			return &Error{Key: "advertise." + p.name, Msg: fmt.Sprintf("advertise.%s: %v", p.name, err)}
		}
		*p.advOut = a
	}
	c.normalized = n
	return nil
}

func advertiseAddr(adv, bindIP string, port int, dev bool) (string, error) {
	if adv != "" {
		if host, p, err := net.SplitHostPort(adv); err == nil {
			if _, err := strconv.ParseUint(p, 10, 16); err != nil {
				return "", fmt.Errorf("invalid port in %q", adv)
			}
			if host == "" {
				return "", fmt.Errorf("%q has no host", adv)
			}
			return adv, nil
		}
		if ip := net.ParseIP(adv); ip != nil && ip.IsUnspecified() {
			return "", fmt.Errorf("cannot advertise the wildcard address %q", adv)
		}
		return net.JoinHostPort(adv, strconv.Itoa(port)), nil
	}
	ip := net.ParseIP(bindIP)
	if !ip.IsUnspecified() {
		return net.JoinHostPort(bindIP, strconv.Itoa(port)), nil
	}
	if dev {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
	}
	host, err := defaultAdvertiseIP()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// interfaceAddrs is replaceable in tests.
var interfaceAddrs = net.InterfaceAddrs

func defaultAdvertiseIP() (string, error) {
	addrs, err := interfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("listing interface addresses: %v", err)
	}
	var fallback string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip4 := ipn.IP.To4()
		if ip4 == nil || ip4.IsLoopback() || ip4.IsLinkLocalUnicast() || ip4.IsUnspecified() {
			continue
		}
		if ip4.IsPrivate() || isSharedAddressSpace(ip4) {
			return ip4.String(), nil
		}
		if fallback == "" {
			fallback = ip4.String()
		}
	}
	if fallback != "" {
		return fallback, nil
	}
	return "", fmt.Errorf("bind_addr is a wildcard and no non-loopback IPv4 address was found to advertise; set advertise { http, rpc, serf }")
}

// isSharedAddressSpace reports 100.64.0.0/10 (RFC 6598), treated as private.
func isSharedAddressSpace(ip net.IP) bool { return ip[0] == 100 && ip[1]&0xC0 == 64 }

func (c *Config) norm() *normalizedAddrs {
	if c.normalized == nil {
		panic("config: NormalizeAddrs must be called before reading addresses")
	}
	return c.normalized
}

// HTTPAddr is the "ip:port" the HTTP API listens on.
func (c *Config) HTTPAddr() string { return c.norm().bindHTTP }

// RPCAddr is the "ip:port" the RPC listener binds.
func (c *Config) RPCAddr() string { return c.norm().bindRPC }

// SerfAddr is the "ip:port" gossip binds.
func (c *Config) SerfAddr() string { return c.norm().bindSerf }

// AdvertiseHTTPAddr is the "host:port" other agents and the API use to
// reach this agent's HTTP API.
func (c *Config) AdvertiseHTTPAddr() string { return c.norm().advHTTP }

// AdvertiseRPCAddr is the "host:port" announced for RPC.
func (c *Config) AdvertiseRPCAddr() string { return c.norm().advRPC }

// AdvertiseSerfAddr is the "host:port" announced for gossip.
func (c *Config) AdvertiseSerfAddr() string { return c.norm().advSerf }
