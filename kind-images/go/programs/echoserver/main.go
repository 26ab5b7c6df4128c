// Command echoserver answers every HTTP request with a plain-text account of it: the pod that answered, the
// client address it saw, the request line and headers, as the lessons' echoserver image does.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"sort"
	"strings"
)

func main() {
	port := flag.Int("port", 8080, "the TCP port to serve HTTP on")
	flag.Parse()
	hostname, _ := os.Hostname()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "\n\nHostname: %s\n\n", hostname)
		fmt.Fprintf(&b, "Pod Information:\n\tnode name:\t%s\n\tpod name:\t%s\n\tpod namespace:\t%s\n\tpod IP:\t%s\n\n",
			os.Getenv("NODE_NAME"), os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE"), os.Getenv("POD_IP"))
		fmt.Fprintf(&b, "Request Information:\n\tclient_address=%s\n\tmethod=%s\n\treal path=%s\n\tquery=%s\n",
			strings.Split(r.RemoteAddr, ":")[0], r.Method, r.URL.Path, r.URL.RawQuery)
		fmt.Fprintf(&b, "\trequest_version=%d.%d\n\trequest_uri=http://%s%s\n\n", r.ProtoMajor, r.ProtoMinor,
			r.Host, r.URL.RequestURI())
		b.WriteString("Request Headers:\n")
		names := make([]string, 0, len(r.Header))
		for name := range r.Header {
			names = append(names, name)
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "\thost=%s\n", r.Host)
		for _, name := range names {
			fmt.Fprintf(&b, "\t%s=%s\n", strings.ToLower(name), strings.Join(r.Header[name], ","))
		}
		b.WriteString("\nRequest Body:\n\t-no body in request-\n\n")
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, b.String())
	})
	log.Fatal(http.ListenAndServe(fmt.Sprintf(":%d", *port), nil))
}
