// spi_master: an SPI mode-0 master (CPOL 0, CPHA 0), MSB first, WIDTH-bit frames, SCLK =
// clk / (2 * (divisor + 1)), one active-low chip select, synchronous active-high reset. MOSI
// changes on SCLK's falling edge, MISO is sampled on its rising edge. Written for the issue-17
// corpus (a serial controller: a state machine, a divider and a shift register).
module spi_master #(
    parameter WIDTH = 8,
    parameter DIV_WIDTH = 8
) (
    input  wire                 clk,
    input  wire                 reset,
    input  wire [DIV_WIDTH-1:0] divisor,
    input  wire                 start,
    input  wire [WIDTH-1:0]     tx_data,
    output wire                 busy,
    output reg                  done,
    output reg  [WIDTH-1:0]     rx_data,
    output reg                  sclk,
    output reg                  cs_n,
    output wire                 mosi,
    input  wire                 miso
);
    localparam BITS_W = $clog2(WIDTH + 1);

    reg [DIV_WIDTH-1:0] div_cnt;
    reg [BITS_W-1:0]    bits_left;
    reg [WIDTH-1:0]     shift;

    assign busy = !cs_n;
    assign mosi = shift[WIDTH-1];

    wire half_tick = (div_cnt == 0);

    always @(posedge clk) begin
        if (reset) begin
            div_cnt <= 0; bits_left <= 0; shift <= 0; rx_data <= 0;
            sclk <= 1'b0; cs_n <= 1'b1; done <= 1'b0;
        end else begin
            done <= 1'b0;
            if (cs_n) begin
                if (start) begin
                    cs_n <= 1'b0; shift <= tx_data; bits_left <= WIDTH[BITS_W-1:0];
                    div_cnt <= divisor;
                end
            end else if (!half_tick) begin
                div_cnt <= div_cnt - 1'b1;
            end else begin
                div_cnt <= divisor;
                if (!sclk) begin
                    sclk <= 1'b1;                                  // rising edge: sample MISO
                    rx_data <= {rx_data[WIDTH-2:0], miso};
                    bits_left <= bits_left - 1'b1;
                end else begin
                    sclk <= 1'b0;                                  // falling edge: next bit
                    if (bits_left == 0) begin
                        cs_n <= 1'b1; done <= 1'b1;
                    end else begin
                        shift <= {shift[WIDTH-2:0], 1'b0};
                    end
                end
            end
        end
    end
endmodule
