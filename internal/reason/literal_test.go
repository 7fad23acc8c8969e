package reason_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// reasonArgs are the calls that take a reason, and which of their arguments
// are reasons (or event types): fail(reason, …), e.tracker.Record(type,
// reason, …), e.tracker.Waiting(name, reason, …), …
var reasonArgs = map[string][]int{
	"fail":         {0},
	"createFailed": {1},
	"Record":       {0, 1},
	"Waiting":      {1},
	"Rejected":     {0},
	"reject":       {0},
}

// TestNoReasonLiterals checks the code that reports reasons names them
// through this package (and event types through corev1): no string literal
// is passed where a call takes a reason, and no Reason field is set to one.
func TestNoReasonLiterals(t *testing.T) {
	dirs := []string{"../steps", "../podstate", "../node", "../probe", "../volume", "../podcfg", "../cleanup", "../render", "../report", "../predict", "../scenario", "../../cmd/podstep"}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, file, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, lit := range reasonLiterals(f) {
				t.Errorf("%s: reason literal %s: use a constant of package reason (or corev1.EventType*)", fset.Position(lit.Pos()), lit.Value)
			}
		}
	}
}

// reasonLiterals finds the non-empty string literals f passes as reasons.
func reasonLiterals(f *ast.File) []*ast.BasicLit {
	var out []*ast.BasicLit
	check := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, _ := strconv.Unquote(lit.Value); s != "" {
				out = append(out, lit)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			var name string
			switch fn := n.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			for _, i := range reasonArgs[name] {
				if i < len(n.Args) {
					check(n.Args[i])
				}
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Reason" {
				check(n.Value)
			}
		}
		return true
	})
	return out
}
