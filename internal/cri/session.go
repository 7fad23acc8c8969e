package cri

// Session returns a new Client on c's connections, with its own call
// history, hooks and Redactor: one per pod when several pods share one
// runtime connection at once (podstep bench), as the kubelet's pod
// workers share its one runtime client. A session's Close closes nothing;
// the connections belong to c.
func (c *Client) Session() *Client {
	return &Client{RuntimeEndpoint: c.RuntimeEndpoint, ImageEndpoint: c.ImageEndpoint, Redactor: &Redactor{},
		rt: c.rt, img: c.img, opts: c.opts}
}
